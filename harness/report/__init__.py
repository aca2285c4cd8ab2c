"""Writing a checker Report as report.json, report.md, report.html and junit.xml."""
