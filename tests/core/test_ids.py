"""The ids a session makes (turns, interactions): what ``str(uuid.uuid4())`` gives."""

from __future__ import annotations

import operator
import uuid
from functools import reduce

from rawp_adapters._protocol._ids import new_uuid4


def test_ids_are_canonical_uuid4_text_with_all_122_random_bits_varying() -> None:
    ids = [new_uuid4() for _ in range(2_000)]
    assert len(set(ids)) == len(ids)
    for text in ids:
        parsed = uuid.UUID(text)
        assert (parsed.version, parsed.variant, str(parsed)) == (4, uuid.RFC_4122, text)
    values = [uuid.UUID(text).int for text in ids]
    varying = reduce(operator.or_, values) & ~reduce(operator.and_, values)
    assert varying.bit_count() == 122
