"""The hostile-template corpus (tests/hostile/*.tpl) and what "contained" means.

Each file is an answer template that tries one way out: an interpreter escape
(pydantic ImportString, ForwardRef._evaluate, create_model in ``builtins``,
format strings walking frames, rebinding the AST guard...) whose payload writes a
marker file, reads a secret file or connects to a socket; or a resource attack
(endless loop, huge integer, ReDoS, memory bomb, fork bomb, a flood of output).
``__MARKER__``, ``__SECRET__`` and ``__PORT__`` are replaced per test run with a
marker path to watch, a secret file outside the sandbox, and the port of a
listening socket that must never see a connection. A ``# judge-fields: {...}``
line gives the judge's reply for that template (default ``{"value": "os.system"}``).
"""

from __future__ import annotations

import json
import socket
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from verifleet.schemas import Benchmark, CallableTrait, Question, RegexTrait, Rubric

__all__ = [
    "SECRET_TEXT",
    "Trap",
    "corpus_benchmark",
    "corpus_files",
    "judge_fields",
    "rubric_attack_question",
]

CORPUS_DIR = Path(__file__).resolve().parent.parent / "hostile"

#: The secret file's content: must never appear in any result.
SECRET_TEXT = "SECRET-5c1e7a-DO-NOT-LEAK"

#: The honest control questions' template: they must pass next to the hostile ones.
HONEST_TEMPLATE = """
from verifleet.templates import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "Paris"}

    def verify(self) -> bool:
        return self.value.strip().lower() == "paris"
"""

#: What the answering model says to every hostile question: bait for the ReDoS
#: regex check, and nothing else of interest.
HOSTILE_ANSWER = "a" * 60 + "!"


@dataclass
class Trap:
    """The marker directory, the secret file and a listening socket for one run."""

    root: Path
    connections: list[Any] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.markers = self.root / "markers"
        self.markers.mkdir(parents=True)
        self.secret = self.root / "secret.txt"
        self.secret.write_text(SECRET_TEXT)
        self._listener = socket.socket()
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(8)
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, peer = self._listener.accept()
            except (TimeoutError, OSError):
                continue
            self.connections.append(peer)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self._listener.close()

    def source(self, path: Path) -> str:
        return (
            path.read_text()
            .replace("__MARKER__", str(self.markers / path.stem))
            .replace("__SECRET__", str(self.secret))
            .replace("__PORT__", str(self.port))
        )

    def assert_contained(self, dumps: list[str]) -> None:
        """No marker written, no secret in any result, no connection made."""
        assert sorted(p.name for p in self.markers.iterdir()) == []
        assert not any(SECRET_TEXT in text for text in dumps)
        assert self.connections == []


def corpus_files() -> list[Path]:
    """The corpus files."""
    files = sorted(CORPUS_DIR.glob("*.tpl"))
    assert len(files) >= 40, "the corpus has at least 40 hostile templates"
    return files


def judge_fields(path: Path) -> dict[str, Any]:
    """The judge's reply to a corpus template: its ``# judge-fields:`` line, else
    a value of no interest."""
    for line in path.read_text().splitlines():
        if line.startswith("# judge-fields:"):
            fields: dict[str, Any] = json.loads(line.split(":", 1)[1])
            return fields
    return {"value": "os.system"}


def corpus_benchmark(trap: Trap, *, honest: int = 2) -> tuple[Benchmark, dict[str, Any]]:
    """The hostile templates as questions, plus ``honest`` control questions, and
    the fake endpoint's answers for them."""
    questions: list[Question] = []
    answers: dict[str, Any] = {}
    for path in corpus_files():
        text = f"Hostile {path.stem}?"
        questions.append(Question(id=path.stem, text=text, answer_template=trap.source(path)))
        answers[text] = {"text": HOSTILE_ANSWER, "fields": judge_fields(path)}
    for i in range(honest):
        text = f"What is the capital of France (control {i})?"
        questions.append(Question(id=f"honest{i}", text=text, answer_template=HONEST_TEMPLATE))
        answers[text] = {"text": "The capital is Paris.", "fields": {"value": "Paris"}}
    return Benchmark(name="hostile-corpus", questions=questions), answers


def rubric_attack_question(trap: Trap) -> tuple[Question, dict[str, Any]]:
    """An honest template with hostile rubric traits: a backtracking regex, a
    callable that never returns, one that reads the secret, one that opens a
    socket; plus one honest callable that must still be scored."""
    text = "Hostile rubric traits?"
    rubric = Rubric(
        regex_traits=[RegexTrait(name="redos", pattern="(a+)+$")],
        callable_traits=[
            CallableTrait(
                name="spin", callable_source="def f(text):\n    while True:\n        pass\n"
            ),
            CallableTrait(
                name="peek",
                callable_source=f"def f(text):\n    return open({str(trap.secret)!r}).read() == text\n",
            ),
            CallableTrait(
                name="dial",
                callable_source=(
                    "import socket\n\ndef f(text):\n"
                    f"    socket.create_connection(('127.0.0.1', {trap.port}))\n    return True\n"
                ),
            ),
            CallableTrait(
                name="length", kind="score", callable_source="def f(text):\n    return len(text)\n"
            ),
        ],
    )
    question = Question(
        id="rubric_attacks", text=text, answer_template=HONEST_TEMPLATE, question_rubric=rubric
    )
    return question, {text: {"text": HOSTILE_ANSWER, "fields": {"value": "Paris"}}}
