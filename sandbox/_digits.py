"""Integers past the interpreter's digit limit, refused inside the executor.

Python refuses to turn an integer of more than ``sys.get_int_max_str_digits()``
(4,300) digits into text and back, and pydantic's JSON parser refuses such a
number outright. A judge value that holds one (a request) or a template whose
ground truth, parsed values or verification output holds one (a reply) would
make the line unreadable on the other side: the host would take that for an
executor that answers nonsense and restart it, and the error would name no
template. Both directions are checked here, in the executor, and answered with
a failure of the template (kind ``template``) that names it.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from verifleet.schemas import VerifleetError

from ._protocol import Reply, encode

__all__ = ["refuse_huge_reply", "undecodable_request"]

#: Digits Python converts (its default, 4,300, unless the process changed it).
_LIMIT = sys.get_int_max_str_digits() or 4300

#: A run of more digits than the limit: a cheap first look (a string may hold
#: one too; only a JSON parse says whether it is a number).
_LONG_DIGITS = re.compile(rb"\d{%d}" % (_LIMIT + 1))


class _TooLong(VerifleetError, ValueError):
    def __init__(self, digits: int) -> None:
        super().__init__(digits)
        self.digits = digits


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > _LIMIT:
        raise _TooLong(len(text.lstrip("-")))
    return int(text)


def _int_or_zero(text: str) -> int:
    return 0 if len(text.lstrip("-")) > _LIMIT else int(text)


def _huge_number(line: bytes) -> int | None:
    """Digits of the first JSON number in ``line`` past the limit, or None."""
    if _LONG_DIGITS.search(line) is None:
        return None
    try:
        json.loads(line, parse_int=_parse_int)
    except _TooLong as exc:
        return exc.digits
    except ValueError:
        return None
    return None


def _limit_message(what: str, digits: int) -> str:
    return (
        f"{what} holds an integer of {digits} digits, past the interpreter's limit of "
        f"{_LIMIT} digits for integers (sys.set_int_max_str_digits); refused"
    )


def _names(line: bytes) -> tuple[int | None, str]:
    """The request's id and how to name its template or trait, read leniently."""
    try:
        request: Any = json.loads(line, parse_int=_int_or_zero)
    except ValueError:
        return None, "the request"
    if not isinstance(request, dict):
        return None, "the request"
    request_id = request.get("id") if isinstance(request.get("id"), int) else None
    if isinstance(request.get("template_id"), str):
        question = request.get("question_id") or "?"
        return request_id, f"template {request['template_id']} (question {question})"
    trait = request.get("trait")
    if isinstance(trait, dict) and isinstance(trait.get("name"), str):
        return request_id, f"trait {trait['name']}"
    return request_id, "the request"


def undecodable_request(line: bytes, problem: str) -> bytes:
    """The reply to a request line that did not decode: a ``template`` failure
    naming the template when an integer past the limit is why (its id kept, so
    the host takes it as this request's answer), else a ``protocol`` failure."""
    digits = _huge_number(line)
    if digits is None:
        return encode(Reply.failure(None, "protocol", problem[:500]))
    request_id, name = _names(line)
    return encode(
        Reply.failure(request_id, "template", _limit_message(f"{name}: the judge's output", digits))
    )


def refuse_huge_reply(reply: bytes, request: object) -> bytes:
    """``reply`` itself, or a ``template`` failure naming the request's template
    when the reply holds an integer past the limit (the host could not read it)."""
    digits = _huge_number(reply)
    if digits is None:
        return reply
    request_id = getattr(request, "id", None)
    template = getattr(request, "template_id", None)
    if template is not None:
        name = f"template {template} (question {getattr(request, 'question_id', '') or '?'})"
    else:
        trait = getattr(request, "trait", None)
        name = f"trait {trait.get('name')}" if isinstance(trait, dict) else "the template"
    return encode(
        Reply.failure(request_id, "template", _limit_message(f"{name}: its answer", digits))
    )
