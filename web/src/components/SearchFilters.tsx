import type { FormEvent } from 'react';
import { useState } from 'react';
import { href, navigate } from '../app/router';
import { Field } from './Field';

/** One text filter of a list page: its URL query key and its label. */
export interface SearchField {
  key: string;
  label: string;
}

/**
 * A list page's filters as a search form: each field is a text box kept in the URL's query
 * (trimmed), applied with the Filter button by navigating to `path` with the new query. Give it
 * a `key` made of the current values so it resets when the URL changes.
 */
export function SearchFilters({ path, label, fields, values }: { path: string; label: string; fields: SearchField[]; values: Record<string, string> }) {
  const [f, setF] = useState<Record<string, string>>(values);
  const submit = (e: FormEvent) => {
    e.preventDefault();
    navigate(href(path, Object.fromEntries(fields.map(({ key }) => [key, (f[key] ?? '').trim()]))));
  };
  return (
    <form className="filters" role="search" aria-label={label} onSubmit={submit}>
      {fields.map(({ key, label: l }) => (
        <Field key={key} label={l}>
          <input type="search" name={key} value={f[key] ?? ''} onChange={(e) => setF({ ...f, [key]: e.target.value })} autoComplete="off" />
        </Field>
      ))}
      <div className="filters-buttons">
        <button type="submit" className="button button-primary">
          Filter
        </button>
      </div>
    </form>
  );
}
