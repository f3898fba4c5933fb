/**
 * Prompts instructors will want (issue #16): templates a client offers its user (slash commands
 * in many hosts) that set an assistant to work with the tools.
 *
 * - `draft_unit {program_id, outline}`: draft a new unit of a program from the instructor's
 *   outline — lessons with bodies, activities with specs and weighted rubrics — and write it
 *   with create_unit / create_lesson / create_activity. The program's outline is embedded (the
 *   `svc://programs/{id}` resource) so the draft fits what is there.
 * - `write_rubric {activity_id}`: write (or rewrite) the rubric of one activity from its spec
 *   and apply it with update_activity. The activity is embedded (`svc://activities/{id}`).
 * Both read the embedded record as the caller: an id the caller cannot read is JSON-RPC -32602,
 * as are missing or malformed arguments (the SDK checks them against the schemas here).
 */
import { McpError, type GetPromptResult } from '@modelcontextprotocol/sdk/types.js';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { JSONRPC } from './jsonrpc.ts';
import { activityUri, programUri, readActivity, readProgram } from './resources.ts';
import type { ToolContext } from './tool.ts';

const userText = (text: string) => ({ role: 'user' as const, content: { type: 'text' as const, text } });
const resourceMessage = (uri: string, text: string) => ({
  role: 'user' as const,
  content: { type: 'resource' as const, resource: { uri, mimeType: 'application/json', text } },
});

/** The records a prompt may embed: the resource of each, and how the caller reads it. */
const EMBEDDABLE = {
  program: { uri: programUri, read: readProgram },
  activity: { uri: activityUri, read: readActivity },
};

/**
 * A prompt about record `id`: the record as the caller reads it, embedded as its resource, then
 * `instruction`. Throws JSON-RPC -32602 ("<record>_id: <record> <id> not found") when the caller
 * cannot read it.
 */
async function aboutRecord(ctx: ToolContext, record: keyof typeof EMBEDDABLE, id: string, description: string, instruction: string): Promise<GetPromptResult> {
  const { uri, read } = EMBEDDABLE[record];
  const json = await read(ctx, id);
  if (json === undefined) throw new McpError(JSONRPC.INVALID_PARAMS, `${record}_id: ${record} ${id} not found`);
  return { description, messages: [resourceMessage(uri(id), JSON.stringify(json)), userText(instruction)] };
}

/** Register the prompts on the request's server. */
export function registerPrompts(server: McpServer, ctx: ToolContext): void {
  server.registerPrompt(
    'draft_unit',
    {
      title: 'Draft a unit from an outline',
      description:
        'Draft a new unit of a program from your outline (lessons, activities with specs and weighted rubrics) and write it with the authoring tools.',
      argsSchema: {
        program_id: z.uuid().describe('Id of the program the unit goes into'),
        outline: z.string().min(1).max(20_000).describe('Your outline of the unit: its topic, the lessons, what learners should produce'),
      },
    },
    ({ program_id, outline }) =>
      aboutRecord(
        ctx,
        'program',
        program_id,
        `Draft a unit of program ${program_id}`,
        `Draft a new unit for the program above (its outline is attached) from this outline:\n\n${outline}\n\n` +
          'Fit it to the units already there (do not repeat them). Propose a title and a short description, the lessons in order ' +
          '(each with a markdown body), and for each lesson the activities learners hand in: a kind (document, site, repo or ' +
          'diagram), a spec saying exactly what to produce, and a rubric of 3–6 criteria, each one checkable sentence with a ' +
          'weight. Show me the draft first; when I approve, write it with create_unit, create_lesson and create_activity ' +
          `(program_id ${program_id}), appending at the end unless I say where.`,
      ),
  );
  server.registerPrompt(
    'write_rubric',
    {
      title: 'Write a rubric for an activity',
      description: "Write (or rewrite) an activity's grading rubric from its spec, with weights and a pass threshold, and apply it with update_activity.",
      argsSchema: { activity_id: z.uuid().describe('Id of the activity') },
    },
    ({ activity_id }) =>
      aboutRecord(
        ctx,
        'activity',
        activity_id,
        `Write a rubric for activity ${activity_id}`,
        'Write a grading rubric for the activity above (attached: its kind, spec, current rubric and pass threshold). ' +
          'Give 3–8 criteria; each is one sentence a grader can check from the artifact alone, covers one requirement of the ' +
          'spec, and has a weight (a non-negative number, larger = more important). Propose a pass threshold (0–100). ' +
          'Explain briefly what changed from the current rubric. When I approve, apply it with update_activity ' +
          `{id: "${activity_id}", rubric, pass_threshold}` +
          ' — note that this overwrites the current rubric.',
      ),
  );
}
