-- skills_tags_text: A skill's tags as one text, IMMUTABLE (array_to_string is only STABLE) for a generated column.
--
-- Migration 0004 creates it too: its generated column needs it at that point of the history.
--
-- Called by: the skills_directory.search_document generated column (migration 0004)
-- History: migration 0004.
create or replace function skills_tags_text(tags text[])
returns text language sql immutable parallel safe as $$ select coalesce(array_to_string(tags, ' '), '') $$;
