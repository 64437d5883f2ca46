# hostile template 38_redos_in_verify: must be refused or contained
import re
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return re.match(r"(a+)+$", "a" * 60 + "!") is not None
