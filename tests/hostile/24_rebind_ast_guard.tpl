# hostile template 24_rebind_ast_guard: must be refused or contained
from verifleet.schemas import _templates
from verifleet.schemas import BaseAnswer
_templates.ast_guard.find_violation = lambda tree: None

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
