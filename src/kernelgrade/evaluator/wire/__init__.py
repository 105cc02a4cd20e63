"""What crosses between the judge and its children, imported by both sides and by neither's internals.

protocol.py is the run child's protocol (one request and one reply type per op, the envelope with its key and
sequence number) and replies.py its reply types; compile_protocol.py is the compile child's one request and
reply. tensorfile.py is the format of the tensors that cross (inputs, outputs), prebuilt.py how a compile
child's builds are named and found again by the run child, and pch_variants.py the names of the
precompiled-header variants a compile child may ask for. hold_page.py is the shared page a held stream
waits on, which the judge makes and watches. Messages are written and read with the evaluator's
codec (codec.py). Nothing here imports the judge, the child, the sandbox or the integrity checks.
"""
