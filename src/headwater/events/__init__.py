"""Change events out: the outbox the manifest fills, sent to NATS JetStream or a webhook.

``payload`` turns an outbox row into a subject, a message id and a JSON body; ``nats``
and ``webhook`` are the two targets; ``publisher`` drains the outbox in commit order into
a target (at the end of a sync, and in a background pump in ``run`` and ``serve``).
"""

from headwater.events.payload import event_body, message_id, subject_of
from headwater.events.publisher import DrainReport, EventPublisher, EventPump, publisher_for

__all__ = [
    "DrainReport",
    "EventPublisher",
    "EventPump",
    "event_body",
    "message_id",
    "publisher_for",
    "subject_of",
]
