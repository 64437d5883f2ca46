# hostile template 07_import_string_value: must be refused or contained
from pydantic import BaseModel, ImportString
from verifleet.schemas import BaseAnswer

class Loader(BaseModel):
    target: ImportString

Loader(target="os.system").target("touch __MARKER__")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
