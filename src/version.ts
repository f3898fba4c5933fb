/** The service's name and version, as reported by `GET /v1/health` and the MCP server info. */
export const SERVICE_NAME = 'learning-content-service';
export const VERSION = '0.1.0';
