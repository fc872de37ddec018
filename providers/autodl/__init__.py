"""AutoDL (autodl.com): GPU containers through the Elastic Deployment API."""
