/** CLI output: JSON for `--json` (one document on stdout), otherwise the command's own text. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Printer = (result: any) => string;

export function print(result: unknown, options: { json: boolean; printer: Printer }): void {
  console.log(options.json ? JSON.stringify(result, null, 2) : options.printer(result));
}
