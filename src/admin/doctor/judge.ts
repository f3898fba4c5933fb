/**
 * The judge's endpoint (SVC_JUDGE_BASE_URL, SVC_JUDGE_MODEL, SVC_JUDGE_API_KEY): one cheap
 * request, `GET <base>/models/<model>` (OpenAI's "retrieve model"; OpenAI-compatible servers
 * answer it too), which proves the endpoint answers, accepts the key and knows the model — no
 * tokens spent. The endpoint is the operator's choice, so it is fetched directly (not through the
 * outbound guard).
 */
import { error, ok, reason, warning, type DoctorContext, type Finding } from './types.ts';

export async function checkJudge({ config, timeoutMs }: DoctorContext): Promise<Finding> {
  const judge = config.judge;
  if (!judge) return ok('judge', 'no judge configured (SVC_JUDGE_BASE_URL unset): submissions are stored and stay pending');
  const url = `${judge.baseUrl.replace(/\/$/, '')}/models/${encodeURIComponent(judge.model)}`;
  let res: Response;
  try {
    res = await fetch(url, { headers: judge.apiKey ? { authorization: `Bearer ${judge.apiKey}` } : {}, signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
  } catch (err) {
    return error(
      'judge',
      `cannot reach the judge at ${judge.baseUrl} (${reason(err)})`,
      'start the model server, or correct SVC_JUDGE_BASE_URL (it ends with /v1 for OpenAI-compatible servers)',
    );
  }
  if (res.ok) return ok('judge', `${judge.baseUrl} knows the model ${judge.model}`);
  if (res.status === 401 || res.status === 403)
    return error('judge', `${judge.baseUrl} refused the API key (HTTP ${res.status})`, 'set SVC_JUDGE_API_KEY to a valid key');
  if (res.status === 404)
    return error(
      'judge',
      `${judge.baseUrl} does not know the model ${judge.model} (HTTP 404 on GET /models/${judge.model})`,
      'set SVC_JUDGE_MODEL to one of the models GET <base>/models lists',
    );
  return warning(
    'judge',
    `${judge.baseUrl} answered HTTP ${res.status} to GET /models/${judge.model}`,
    'check the endpoint by hand; grading may still work if it does not list models',
  );
}
