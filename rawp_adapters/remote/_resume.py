"""Where a re-attached Master's reading starts: the stream sequence of the session's
first frame past the ``seq`` it had, found by bisection over the frames stream (a few
requests, however long the stream), so that a resume does not replay the session from
its first frame. Runs in nats-py's loop."""

from __future__ import annotations

from nats.js import JetStreamContext
from nats.js.api import RawStreamMsg
from nats.js.errors import NotFoundError

from rawp_adapters.remote._names import MSG_ID


async def start_after(js: JetStreamContext, stream: str, subject: str, seq: int) -> int | None:
    """The stream sequence to read ``subject`` from so that its first frame is the one
    after ``seq`` (one past its last frame when that one has been seen); ``None`` when
    nothing can be skipped or a frame does not say its ``seq`` (then read it all)."""
    if seq <= 0:
        return None
    try:
        last = await js.get_last_msg(stream, subject)
    except NotFoundError:
        return None
    last_seq = _frame_seq(last)
    if last_seq is None or last.seq is None:
        return None
    if last_seq <= seq:
        return last.seq + 1
    # The smallest stream sequence whose next frame on the subject is past `seq`: frames
    # are published in `seq` order, so that test only turns from false to true once.
    low, high = 1, last.seq
    while low < high:
        middle = (low + high) // 2
        frame = await js.get_msg(stream, seq=middle, subject=subject, next=True)
        frame_seq = _frame_seq(frame)
        if frame_seq is None or frame.seq is None:
            return None
        if frame_seq > seq:
            high = middle
        else:
            low = frame.seq + 1  # nothing of the subject lies between middle and it
    return low


def _frame_seq(message: RawStreamMsg) -> int | None:
    """The ``seq`` in a frame's de-duplication id (``<session_id>:<seq>``)."""
    _, _, seq = str((message.headers or {}).get(MSG_ID, "")).rpartition(":")
    return int(seq) if seq.isdigit() else None
