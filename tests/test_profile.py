from course.bench.profile import parse_csv

CANNED = """==PROF== Connected to process 123
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","123","python3","127.0.0.1","kernel_cutlass_kernel_x","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","us","176.42"
"0","123","python3","127.0.0.1","kernel_cutlass_kernel_x","1","7","(384, 1, 1)","(132, 1, 1)","0","9.0","GPU Speed Of Light Throughput","Compute (SM) Throughput","%","81.3"
"""


def test_parse_ncu_csv():
    m = parse_csv(CANNED)
    assert m["Duration"]["value"] == "176.42" and m["Duration"]["unit"] == "us"
    assert m["Compute (SM) Throughput"]["kernel"] == "kernel_cutlass_kernel_x"
