-- Tags on projects, for attribute-based rules: a JSON array of strings.
ALTER TABLE projects ADD COLUMN tags TEXT NOT NULL DEFAULT '[]';
