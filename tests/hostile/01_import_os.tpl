# hostile template 01_import_os: must be refused or contained
import os
from verifleet.schemas import BaseAnswer
os.system("touch __MARKER__")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
