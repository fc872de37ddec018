"""The front desk: what people ask that runs through the rooms below it: `/gpu book` (book, then acquire at once),
approvals, watches, Replace, and the buttons on a booking's message."""
