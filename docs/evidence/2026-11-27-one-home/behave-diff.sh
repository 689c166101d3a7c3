#!/usr/bin/env bash
# diff two behave46 outputs, ignoring generation times and dates
diff -r -I 'generated\|Generated\|20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T\|[0-9][0-9]:[0-9][0-9]' "$1" "$2"
