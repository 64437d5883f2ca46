# hostile template 58_redos_judge_schema: must be refused or contained
# judge-fields: {"value": "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}
# The judge schema carries a backtracking pattern; a host that evaluates it on
# the judge's value (forty a's and a '!') freezes while holding the GIL.
from pydantic import Field
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str = Field(pattern=r"^(a+)+$")

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
