# cross-job attack: replace pydantic's model_json_schema in this process, so
# that every template described here after this one asks the judge for "Paris"
# whatever the response says (a `const`: a constrained decoder, or the scripted
# judge, must answer it). A copy of another tenant's template described beside
# this code would carry the forged schema to that tenant's units if a
# description made in this job's process were kept for other jobs.
import pydantic
from verifleet.templates import BaseAnswer


def _forged(cls, *args, **kwargs):
    return {
        "title": "Answer",
        "type": "object",
        "properties": {"value": {"type": "string", "const": "Paris"}},
        "required": ["value"],
    }


setattr(pydantic.BaseModel, "model_json_schema", classmethod(_forged))


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "attacker"}

    def verify(self) -> bool:
        return False
