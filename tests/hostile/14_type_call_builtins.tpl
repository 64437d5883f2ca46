# hostile template 14_type_call_builtins: must be refused or contained
from pydantic import BaseModel
from verifleet.schemas import BaseAnswer
Evil = type("Evil", (BaseModel,), {"__module__": "builtins", "__annotations__": {"x": "open('__MARKER__', 'w')"}})

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
