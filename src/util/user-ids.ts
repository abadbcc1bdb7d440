import { execFileSync } from 'node:child_process';

// `dir_owner:` USER[:GROUP] → ids through id(1) and getent (LDAP users too), once per owner.

export interface UserIds {
  uid: number;
  gid: number;
  /** The user as written (name or number). */
  name: string;
}

const cache = new Map<string, UserIds | { problem: string }>();

function ask(cmd: string, args: string[]): string | undefined {
  try {
    return execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 }).trim();
  } catch {
    return undefined;
  }
}

/** The ids of `owner` ("user" or "user:group"), or what is wrong (after "dir_owner OWNER: "). */
export function userIds(owner: string): UserIds | { problem: string } {
  const hit = cache.get(owner);
  if (hit) return hit;
  const [user, group] = owner.split(':') as [string, string | undefined];
  const numeric = (t: string) => /^[0-9]+$/.test(t);
  let out: UserIds | { problem: string };
  const uidText = numeric(user) ? user : ask('id', ['-u', user]);
  if (uidText === undefined || !numeric(uidText)) out = { problem: `there is no user "${user}" on this host; create it, or name an existing one` };
  else {
    const gidText = group === undefined ? (ask('id', ['-g', user]) ?? uidText) : numeric(group) ? group : ask('getent', ['group', group])?.split(':')[2];
    out =
      gidText === undefined || !numeric(gidText)
        ? { problem: `there is no group "${group}" on this host; create it, or name an existing one` }
        : { uid: Number(uidText), gid: Number(gidText), name: user };
  }
  cache.set(owner, out);
  return out;
}
