# hostile template 46_socket_connect: must be refused or contained
import socket
from verifleet.schemas import BaseAnswer
socket.create_connection(("127.0.0.1", __PORT__)).send(b"pwned")

class Answer(BaseAnswer):
    value: str

    def model_post_init(self, context):
        self.correct = {"value": "safe"}

    def verify(self) -> bool:
        return False
