"""What crosses between the judge and its children, imported by both sides and by neither's internals.

tensorfile.py is the format of the tensors that cross (inputs, outputs), prebuilt.py how a compile child's
builds are named and found again by the run child, replies.py the run child's answers as typed values, and
pch_variants.py the names of the precompiled-header variants a compile child may ask for. Nothing here
imports the judge, the child, the sandbox or the integrity checks.
"""
