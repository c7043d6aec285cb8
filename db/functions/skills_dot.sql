-- skills_dot: The dot product of two unit vectors (cosine similarity) when the embedding column is real[] (no pgvector).
--
-- unnest() in the select list (not FROM) streams the pairs instead of materialising them.
--
-- Called by: db/skills/search.ts embeddingCandidates
-- History: migration 0004.
create or replace function skills_dot(a real[], b real[])
returns double precision language sql immutable parallel safe strict as $$ select sum(x::double precision * y) from (select unnest(a) as x, unnest(b) as y) as pairs $$;
