"""One run's answer: its leaders and verdicts, findings and explanations, tables, figures and the template library every page uses."""
