# hostile template 13_create_model_builtins: must be refused or contained
from pydantic import create_model
from verifleet.schemas import BaseAnswer
Evil = create_model("Evil", __module__="builtins", x=("__import__('os').system('touch __MARKER__')", None))

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
