/** A credential in a plugin config: always a reference to a key of a Secret in the plugin's namespace. */
import { Type } from '@sinclair/typebox';

export const SecretKeyRefSchema = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: 253,
      description: 'Name of the Secret, in the namespace of the GatewayPlugin.',
    }),
    key: Type.String({ minLength: 1, maxLength: 253, description: "Key within the Secret's data." }),
  },
  { additionalProperties: false, description: 'A value held in a Kubernetes Secret.' },
);

/** A secretKeyRef whose value the data plane needs (keys that verify or decrypt): the controller sets `value`, base64. */
export const SecretValueSchema = (description: string) =>
  Type.Object(
    {
      secretKeyRef: SecretKeyRefSchema,
      value: Type.Optional(Type.String({ description: 'Set by the controller from the Secret (base64).' })),
    },
    { additionalProperties: false, description },
  );
