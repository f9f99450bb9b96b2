"""The beat schedule: beat only triggers cheap scans, so a second beat does no harm."""
