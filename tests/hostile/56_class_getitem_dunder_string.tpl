# hostile template 56_class_getitem_dunder_string: must be refused or contained
from verifleet.schemas import BaseAnswer
LEAK = vars(len)

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": str(LEAK)}

    def verify(self) -> bool:
        return False
