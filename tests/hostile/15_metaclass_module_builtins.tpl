# hostile template 15_metaclass_module_builtins: must be refused or contained
from pydantic import BaseModel
from verifleet.schemas import BaseAnswer

class Evil(BaseModel):
    x: "open('__MARKER__', 'w')" = None
    locals()["__module__"] = "builtins"


class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
