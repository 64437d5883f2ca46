# hostile template 29_string_formatter: must be refused or contained
from string import Formatter
from verifleet.schemas import BaseAnswer
Formatter().get_field("0.__globals__", [len], {})

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
