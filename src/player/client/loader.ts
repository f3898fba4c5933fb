/**
 * `svc-embed.js` — the two lines a partner adds:
 *
 *   <script src="https://svc.example.com/embed/v1/svc-embed.js"></script>
 *   <script>SvcEmbed.mount(el, { tenant: 'acme', activity: '<uuid>', getToken: () => myIdp.token() });</script>
 *
 * `mount` creates the player's iframe (titled, full width, height following its content) and
 * speaks the protocol (../protocol.ts) with it: on `svc:ready` and `svc:auth-expiring` it asks
 * `getToken()` for the learner's IdP token and posts `svc:auth` to the player's origin only; it
 * accepts messages only from that iframe's window and the service's origin, and hands each to
 * `onMessage`. If the player never speaks (the page is not allowed to frame it, the
 * service is unreachable), a readable message replaces the frame and `onMessage` gets `svc:error`
 * `player_unavailable` — never a blank frame. No cookies: the token travels in messages only.
 */
import { isProtocolMessage, PROTOCOL_VERSION, type HostMessage, type PlayerMessage } from '../protocol.ts';

interface MountOptions {
  tenant: string;
  activity: string;
  /** The learner's IdP token (a JWT of the tenant's identity provider). */
  getToken: () => Promise<string> | string;
  /** Every message of the player (and the loader's own `svc:error`). */
  onMessage?: (message: PlayerMessage) => void;
  /** How long to wait for `svc:ready`, in ms (default 10 000). */
  readyTimeoutMs?: number;
  /** The iframe's title (default "Activity"). */
  title?: string;
}

const script = document.currentScript as HTMLScriptElement | null;
const SERVICE = new URL(script?.src ?? location.href).origin;

/** Mount the player for `options.activity` into `element`; returns `unmount()`. */
function mount(element: HTMLElement, options: MountOptions): { unmount: () => void } {
  const frame = document.createElement('iframe');
  const query = new URLSearchParams({ tenant: String(options.tenant ?? ''), activity: String(options.activity ?? ''), host: location.origin });
  frame.src = `${SERVICE}/embed/v1/play?${query}`;
  frame.title = options.title ?? 'Activity';
  frame.style.cssText = 'display:block;width:100%;border:0;height:320px';
  element.replaceChildren(frame);
  let alive = false; // the player has spoken (svc:ready, or svc:error from its error page)

  const emit = (message: PlayerMessage) => options.onMessage?.(message);
  const send = (message: HostMessage) => frame.contentWindow?.postMessage(message, SERVICE);
  const authenticate = async () => {
    try {
      send({ type: 'svc:auth', v: PROTOCOL_VERSION, idp_token: String(await options.getToken()) });
    } catch (err) {
      emit({ type: 'svc:error', v: PROTOCOL_VERSION, code: 'token_unavailable', message: `getToken() failed: ${(err as Error)?.message ?? err}` });
    }
  };

  const onMessage = (event: MessageEvent) => {
    if (event.source !== frame.contentWindow || event.origin !== SERVICE || !isProtocolMessage(event.data)) return;
    const message = event.data as PlayerMessage;
    alive = true;
    if (message.type === 'svc:ready' || message.type === 'svc:auth-expiring') void authenticate();
    if (message.type === 'svc:resize' && Number.isFinite(message.height)) frame.style.height = `${Math.max(80, Math.ceil(message.height))}px`;
    emit(message);
  };
  window.addEventListener('message', onMessage);

  const timer = setTimeout(() => {
    if (alive) return;
    const note = document.createElement('p');
    note.setAttribute('role', 'alert');
    note.textContent = 'The activity could not be loaded here. This site may not be allowed to embed it, or the service is unreachable.';
    element.replaceChildren(note);
    emit({ type: 'svc:error', v: PROTOCOL_VERSION, code: 'player_unavailable', message: note.textContent });
  }, options.readyTimeoutMs ?? 10_000);

  return {
    unmount() {
      clearTimeout(timer);
      window.removeEventListener('message', onMessage);
      element.replaceChildren();
    },
  };
}

(window as unknown as { SvcEmbed: { mount: typeof mount } }).SvcEmbed = { mount };
