/** CLI output: JSON for `--json` (one document on stdout), otherwise the command's own text. */
// biome-ignore lint/suspicious/noExplicitAny: each printer reads the JSON result of its own operation (admin/ops), whose shape it knows; the result may have crossed HTTP from the running server, so no static type describes it
export type Printer = (result: any) => string;

export function print(result: unknown, options: { json: boolean; printer: Printer }): void {
  console.log(options.json ? JSON.stringify(result, null, 2) : options.printer(result));
}
