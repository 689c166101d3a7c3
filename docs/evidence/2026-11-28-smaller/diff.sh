#!/usr/bin/env bash
# diff two behave outputs, ignoring generation times and dates and binary figures
diff -r -x '*.png' -x '*.svg' -I 'generated\|Generated\|20[0-9][0-9]-[0-9][0-9]-[0-9][0-9]T\|[0-9][0-9]:[0-9][0-9]' "$1" "$2"
