import type { FastifyReply } from 'fastify';

/** Sends a rendered page as HTML with this status. */
export function sendPage(reply: FastifyReply, page: { text: string }, status: number) {
  return reply.code(status).type('text/html; charset=utf-8').send(page.text);
}
