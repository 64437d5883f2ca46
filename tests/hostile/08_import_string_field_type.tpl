# hostile template 08_import_string_field_type: must be refused or contained
from pydantic import ImportString
from verifleet.schemas import BaseAnswer


class Answer(BaseAnswer):
    value: str
    handle: ImportString = "os.system"

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        self.handle("touch __MARKER__")
        return False
