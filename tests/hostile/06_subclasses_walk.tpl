# hostile template 06_subclasses_walk: must be refused or contained
from verifleet.schemas import BaseAnswer
for c in ().__class__.__bases__[0].__subclasses__():
    pass

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
