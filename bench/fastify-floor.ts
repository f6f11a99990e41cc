// The floor of the cold-start case of `npm run bench` (bench/cold-start.ts): the start of a trivial Fastify
// server, one route answering a constant to POST /v1/keys.verifyKey. What Node plus Fastify cost to start on
// this machine, next to which the real server's start is read.
//
//   PORT=… HOST=… node bench/fastify-floor.ts

import Fastify from 'fastify';

const app = Fastify();
app.post('/v1/keys.verifyKey', async () => ({ valid: false, code: 'NOT_FOUND' }));
await app.listen({ port: Number(process.env.PORT), host: process.env.HOST ?? '127.0.0.1' });
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
