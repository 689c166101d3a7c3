"""The pages of one machine's runs: the HTML report with its glossary, and the doctor's findings."""
