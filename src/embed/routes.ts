/** Placeholder: the embed surface is being built. */
import type { FastifyInstance } from 'fastify';
import type { Deps } from '../deps.ts';

export default async function embedRoutes(_app: FastifyInstance, _deps: Deps) {}
