"""Who answered the pairs behind a calibration, and the words every output uses for it.

A person labels pairs with ``sibscan calibrate`` (web page or terminal): "hand labels".  A labels file
can also come from an *oracle* that knows the planted truth (the demo's calibration kept in
``calibration/demo-series/``, the tests, the benchmarks' simulations): its records say
``"labeller": "oracle"``, and what a calibration fitted on them says is "oracle labels", never
"hand labels" — an oracle's answers are not a person's judgement of the definition of "same".

``labels.jsonl`` records carry ``labeller`` (a login name, or ``"oracle"``); ``cutoff.json`` carries
the calibration's :func:`of_records` (``"hand"``, ``"oracle"`` or ``"hand and oracle"``), and the
headline, the report and ``calibrate``'s lines word it with :func:`noun` and :func:`by`.  A record
or a calibration without the field is a person's (every calibration before the field was).
"""
from __future__ import annotations

from typing import Iterable, Optional

__all__ = ["HAND", "ORACLE", "by", "kind", "noun", "of_records"]

#: the ``labeller`` of an oracle's label records, and the kind of a calibration made from them only
ORACLE = "oracle"
#: the kind of a calibration whose answers a person gave
HAND = "hand"
_MIXED = f"{HAND} and {ORACLE}"


def kind(record: dict) -> str:
    """``"oracle"`` for a label record whose ``labeller`` is ``"oracle"``, else ``"hand"``."""
    return ORACLE if str(record.get("labeller") or "").strip().lower() == ORACLE else HAND


def of_records(records: Iterable[dict]) -> str:
    """Who answered ``records`` (the answers a fit used): ``"hand"``, ``"oracle"`` or ``"hand and oracle"``
    (``"hand"`` when there are none: a person will)."""
    kinds = {kind(r) for r in records}
    return _MIXED if len(kinds) > 1 else kinds.pop() if kinds else HAND


def noun(labeller: Optional[str]) -> str:
    """The answers in words: ``"hand labels"``, ``"oracle labels"``, ``"hand and oracle labels"``
    (``None``, a record without the field: ``"hand labels"``)."""
    return f"{labeller or HAND} labels"


def by(labeller: Optional[str]) -> str:
    """Who gave an answer, after "labelled same": ``"by hand"``, ``"by the oracle"``, ``"by hand or by the oracle"``."""
    return {ORACLE: "by the oracle", _MIXED: "by hand or by the oracle"}.get(labeller or HAND, "by hand")
