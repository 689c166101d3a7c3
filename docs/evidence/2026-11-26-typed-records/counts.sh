cd $1
a=$(grep -rn 'Mapping\[str, Any\]' harness | wc -l)
b=$(grep -rn 'dict\[str, Any\]' harness | wc -l)
c=$(grep -rnoE '\b[a-z_]+\[\"[a-z_0-9]+\"\]|\.get\(\"[a-z_0-9]+\"' harness/analysis | wc -l)
d=$(cat harness/analysis/{findings,explain,scaling,tables,ratios_text,nightly_text}.py | grep -oE '\b[a-z_]+\[\"[a-z_0-9]+\"\]|\.get\(\"[a-z_0-9]+\"' | wc -l)
e=$(grep -rn 'Mapping\[str, Any\]' harness/analysis | wc -l)
echo "Mapping[str, Any]=$a (analysis $e) dict[str, Any]=$b analysis-string-lookups=$c row-reader-modules=$d records.py=$(wc -l < harness/contract/records.py) rows.py=$(wc -l < harness/results/rows.py) columns.py=$(wc -l < harness/contract/columns.py 2>/dev/null || echo 0)"
