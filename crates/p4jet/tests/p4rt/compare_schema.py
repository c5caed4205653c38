"""Compares p4jet's P4Runtime schema with the generated code of the PyPI
`p4runtime` package (and googleapis-common-protos for google.rpc), message by
message: every field's name, number, label, type and oneof, every enum value, every
RPC. Prints the differences and `N passed, N failed`.

    compare_schema.py P4JET_DESCRIPTOR_SET.bin
"""

import importlib
import sys

from google.protobuf import descriptor_pb2

FD = descriptor_pb2.FieldDescriptorProto


def walk_message(prefix, m, out):
    name = prefix + "." + m.name
    for f in m.field:
        oneof = m.oneof_decl[f.oneof_index].name if f.HasField("oneof_index") else ""
        out[f"{name}.{f.name}"] = (f.number, FD.Label.Name(f.label), FD.Type.Name(f.type),
                                   f.type_name, oneof)
    for n in m.nested_type:
        walk_message(name, n, out)
    for e in m.enum_type:
        walk_enum(name, e, out)


def walk_enum(prefix, e, out):
    for v in e.value:
        out[f"{prefix}.{e.name}.{v.name}"] = v.number


def walk_file(fd, out):
    if fd.package.startswith("google.protobuf"):
        return
    for m in fd.message_type:
        walk_message("." + fd.package, m, out)
    for e in fd.enum_type:
        walk_enum("." + fd.package, e, out)
    for s in fd.service:
        for r in s.method:
            out[f"rpc {fd.package}.{s.name}.{r.name}"] = (r.input_type, r.output_type,
                                                         r.client_streaming, r.server_streaming)


official = {}
for mod in ["p4.v1.p4runtime_pb2", "p4.v1.p4data_pb2", "p4.config.v1.p4info_pb2",
            "p4.config.v1.p4types_pb2", "google.rpc.status_pb2", "google.rpc.code_pb2"]:
    fd = descriptor_pb2.FileDescriptorProto()
    importlib.import_module(mod).DESCRIPTOR.CopyToProto(fd)
    walk_file(fd, official)

ours = {}
fds = descriptor_pb2.FileDescriptorSet()
with open(sys.argv[1], "rb") as f:
    fds.ParseFromString(f.read())
for fd in fds.file:
    if fd.package == "p4.tmp":
        continue
    walk_file(fd, ours)

passed = failed = 0
for k in sorted(set(official) | set(ours)):
    a, b = official.get(k), ours.get(k)
    if a == b:
        passed += 1
    else:
        failed += 1
        print(f"DIFF {k}: official {a}, p4jet {b}")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
