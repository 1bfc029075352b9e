-- The people example's records: who works where, and what they know.
CREATE TABLE IF NOT EXISTS people (
  id integer PRIMARY KEY,
  name text NOT NULL,
  department text NOT NULL,
  city text NOT NULL
);
CREATE TABLE IF NOT EXISTS skills (
  person_id integer NOT NULL REFERENCES people (id),
  skill text NOT NULL,
  level text NOT NULL CHECK (level IN ('beginner', 'intermediate', 'expert')),
  PRIMARY KEY (person_id, skill)
);
INSERT INTO people (id, name, department, city) VALUES
  (1, 'Ada Byron', 'Research', 'London'),
  (2, 'Grace Hopper', 'Platform', 'New York'),
  (3, 'Linus Ek', 'Platform', 'Oslo'),
  (4, 'Margaret Hamilton', 'Research', 'Boston'),
  (5, 'Guido Rossi', 'Data', 'Amsterdam'),
  (6, 'Barbara Liskov', 'Platform', 'Boston'),
  (7, 'Ken Tamura', 'Data', 'Tokyo'),
  (8, 'Frances Allen', 'Research', 'New York'),
  (9, 'Dennis Ritchie', 'Platform', 'London'),
  (10, 'Radia Perlman', 'Data', 'Oslo')
ON CONFLICT (id) DO NOTHING;
INSERT INTO skills (person_id, skill, level) VALUES
  (1, 'Python', 'expert'), (1, 'Mathematics', 'expert'),
  (2, 'COBOL', 'expert'), (2, 'Python', 'beginner'),
  (3, 'C', 'expert'), (3, 'Rust', 'intermediate'),
  (4, 'Python', 'intermediate'), (4, 'Assembly', 'expert'),
  (5, 'Python', 'expert'), (5, 'SQL', 'expert'),
  (6, 'Java', 'expert'), (6, 'TypeScript', 'intermediate'),
  (7, 'Python', 'intermediate'), (7, 'SQL', 'intermediate'),
  (8, 'Fortran', 'expert'),
  (9, 'C', 'expert'), (9, 'Go', 'intermediate'),
  (10, 'Python', 'beginner'), (10, 'Networking', 'expert')
ON CONFLICT (person_id, skill) DO NOTHING;
