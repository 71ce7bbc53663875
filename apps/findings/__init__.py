"""What the researcher pages, the report and the exports all draw from a stored result: number
formats, charts, figures with their how-to-read texts, and the study's answer in words.

It sits below both rooms that show results (apps.dashboard, apps.reports) and reads only the
stored document and apps.analysis's labels, so a page and the report cannot drift apart: they
call the same function for the same figure.
"""
