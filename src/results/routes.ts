/** Placeholder: the results surface is being built. */
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';

export default async function resultsRoutes(_app: FastifyInstance, _deps: Deps) {}
