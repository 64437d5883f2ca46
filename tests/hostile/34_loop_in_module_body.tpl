# hostile template 34_loop_in_module_body: must be refused or contained
from verifleet.schemas import BaseAnswer
while True:
    pass

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
