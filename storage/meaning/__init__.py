"""What a selection means, over plain lists of records.

The reference double answers with these functions; the SQL backend must agree with
them (the contract cases and the differential test check it). Nothing here imports
the rules (``storage.tx``) or a backend.
"""
