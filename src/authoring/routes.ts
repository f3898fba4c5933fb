/** Placeholder: the authoring surface is being built. */
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';

export default async function authoringRoutes(_app: FastifyInstance, _deps: Deps) {}
