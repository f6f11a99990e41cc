import { Type } from '@sinclair/typebox';
import { EVENT_TYPES, MAX_EXPIRING_WITHIN_DAYS, MAX_WEBHOOK_DESCRIPTION, MAX_WEBHOOK_URL } from '../../domain/webhook-events.ts';
import { Bounded, Nullable, OneOf } from './common.ts';

export const EndpointId = Type.String({ minLength: 1, maxLength: 100, description: 'The endpoint (`whep_…`).' });
export const EventTypeList = Type.Array(OneOf(EVENT_TYPES), {
  minItems: 1,
  maxItems: EVENT_TYPES.length * 2,
  description: 'The event types the endpoint receives (default: every type).',
});

/** The members of createEndpoint, all optional but `url`; updateEndpoint takes each optionally. */
export const EndpointProps = {
  url: Type.String({ minLength: 1, maxLength: MAX_WEBHOOK_URL, description: 'An https URL without credentials, to a public address.' }),
  events: Type.Optional(EventTypeList),
  description: Type.Optional(Type.String({ maxLength: MAX_WEBHOOK_DESCRIPTION })),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true.' })),
  creditsLowBelow: Type.Optional(
    Bounded('count', { minimum: 1, description: '`key.credits.low` when a spend takes `remaining` below this (default 10).' }),
  ),
  expiringWithinDays: Type.Optional(
    Type.Integer({
      minimum: 1,
      maximum: MAX_EXPIRING_WITHIN_DAYS,
      description: '`key.expiring` this many days before `expires` (default 7).',
    }),
  ),
};

export const UpdateEndpointProps = {
  endpointId: EndpointId,
  url: Type.Optional(EndpointProps.url),
  events: EndpointProps.events,
  description: Type.Optional(Nullable(Type.String({ maxLength: MAX_WEBHOOK_DESCRIPTION }))),
  enabled: EndpointProps.enabled,
  creditsLowBelow: EndpointProps.creditsLowBelow,
  expiringWithinDays: EndpointProps.expiringWithinDays,
};

export const Endpoint = Type.Object({
  endpointId: Type.String(),
  url: Type.String(),
  events: Type.Array(Type.String()),
  description: Type.Optional(Type.String()),
  enabled: Type.Boolean(),
  disabledReason: Type.Optional(Type.String()),
  creditsLowBelow: Type.Integer(),
  expiringWithinDays: Type.Integer(),
  createdAt: Type.Integer(),
  updatedAt: Type.Integer(),
});

export const DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

export const Delivery = Type.Object({
  deliveryId: Type.String(),
  eventId: Type.String({ description: 'The `webhook-id` of every attempt.' }),
  type: Type.String(),
  status: OneOf(DELIVERY_STATUSES),
  attempts: Type.Integer(),
  lastStatusCode: Type.Optional(Type.Integer()),
  lastError: Type.Optional(Type.String()),
  nextAttemptAt: Type.Optional(Type.Integer()),
  createdAt: Type.Integer(),
  deliveredAt: Type.Optional(Type.Integer()),
});

export const Empty = Type.Object({});
