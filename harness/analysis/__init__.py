"""Pure statistics and rendering over result rows: metrics, the regression gate, compare, hardware
comparison, verify's verdicts, doctor's warnings, tables, figures and the HTML report."""
