# hostile template 39_redos_regex_checks: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}
        self.regex = {"redos": {"pattern": "(a+)+$", "expected": 1, "match_type": "count"}}

    def verify(self) -> bool:
        return False
