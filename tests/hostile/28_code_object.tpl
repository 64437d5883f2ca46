# hostile template 28_code_object: must be refused or contained
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        code = self.verify.__func__.__code__
        return code is None
